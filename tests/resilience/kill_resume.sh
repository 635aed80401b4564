#!/usr/bin/env bash
# A training killed with SIGKILL at random moments resumes from its newest valid checkpoint and
# ends as the uninterrupted run ends, bit for bit: the exported model and checkpoint are the same
# bytes, and every step the last run makes has the uninterrupted run's loss. Before the last run
# the newest checkpoint is corrupted (one byte flipped): it is detected and the one before it used.
#
#   bash tests/resilience/kill_resume.sh CLTRAIN [KILLS] [BACKEND]
#
# CLTRAIN: the cltrain binary. KILLS: 20. BACKEND: opencl (POCL in CI) or cpu. mnist-kaggle,
# batch 32, 6 epochs of 1024 random samples, a checkpoint every 5 steps. ~35 s.
set -euo pipefail
cli=$1
kills=${2:-20}
backend=${3:-opencl}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$cli" make-model mnist-kaggle -o m.circle --batch_size 32 > /dev/null
python3 - <<'PY'
import random, struct
random.seed(7)
n = 1024
with open("x.bin", "wb") as fx, open("y.bin", "wb") as fy:
    for s in range(n):
        fx.write(struct.pack("<784f", *[random.random() for _ in range(784)]))
        y = [0.0] * 10
        y[random.randrange(10)] = 1.0
        fy.write(struct.pack("<10f", *y))
PY
args=(m.circle --load_input:raw x.bin --load_expected:raw y.bin --epoch 6 --batch_size 32 --optimizer 2
      --learning_rate 0.001 --backends "$backend" --no-progress)
CLTRAIN_STEP_LOG=ref.log "$cli" "${args[@]}" --export_checkpoint ref.ckpt --export_circle ref.circle > ref.out
[ "$(wc -l < ref.log)" = 192 ] || { echo "kill_resume: the reference run logged $(wc -l < ref.log) steps, not 192"; exit 1; }

newest() { ls ckpt | { grep -v tmp || true; } | sort | tail -1; }  # the newest checkpoint's name

# Each run goes on from the last checkpoint; kills land anywhere: at start, mid-step, mid-write.
mkdir ckpt
landed=0
for i in $(seq 1 "$kills"); do
  before=$(newest)
  "$cli" "${args[@]}" --resume ckpt --checkpoint_every 5 --keep_checkpoints 3 > "run$i.out" 2> "run$i.err" &
  pid=$!
  if [ $((i % 2)) = 1 ]; then
    # Any moment: at start-up, while preparing, mid-step, mid-write.
    sleep "$(python3 -c "import random; print(round(random.uniform(0.05, 1.5), 3))")"
  else
    # Soon after this run's first new checkpoint (so that kills land in training however loaded
    # the machine is): mid-step or mid-write of the next.
    for _ in $(seq 1 600); do
      [ "$(newest)" != "$before" ] && break
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.1
    done
    sleep "$(python3 -c "import random; print(round(random.uniform(0.0, 0.3), 3))")"
  fi
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  after=$(newest)
  [ "$before" != "$after" ] && landed=$((landed + 1))
  # A kill mid-write leaves a step-N.ckpt.tmp.PID, which the next run's writes remove.
  if ls ckpt | grep -v '^step-[0-9]\{10\}\.ckpt\(\.tmp\.[0-9]*\)\?$' | grep -q .; then
    echo "kill_resume: kill $i left a stray file in the checkpoint directory: $(ls ckpt | tr '\n' ' ')"
    exit 1
  fi
done
echo "kill_resume: $kills kills, $landed of them after a new checkpoint; newest $(newest)"
[ "$landed" -ge 8 ] || { echo "kill_resume: too few kills landed during training ($landed)"; exit 1; }

# The newest checkpoint corrupted: passed over with one warning, the one before used.
newest=$(newest)
python3 - "ckpt/$newest" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x40
open(p, "wb").write(b)
PY
CLTRAIN_STEP_LOG=last.log "$cli" "${args[@]}" --resume ckpt --checkpoint_every 5 --keep_checkpoints 3 \
  --export_checkpoint out.ckpt --export_circle out.circle > last.out 2> last.err
grep -q "$newest: checksum mismatch" last.err || { echo "kill_resume: the corrupted $newest was not named:"; cat last.err; exit 1; }
grep -q "resuming from" last.err || { echo "kill_resume: the last run did not resume:"; cat last.err; exit 1; }
if ls ckpt | grep -v '^step-[0-9]\{10\}\.ckpt$' | grep -q .; then
  echo "kill_resume: files left in the checkpoint directory: $(ls ckpt | tr '\n' ' ')"
  exit 1
fi
[ "$(ls ckpt | wc -l)" -le 3 ] || { echo "kill_resume: more than --keep_checkpoints 3 kept: $(ls ckpt | tr '\n' ' ')"; exit 1; }
cmp ref.circle out.circle || { echo "kill_resume: the exported model differs from the uninterrupted run's"; exit 1; }
cmp ref.ckpt out.ckpt || { echo "kill_resume: the final checkpoint differs from the uninterrupted run's"; exit 1; }
# Every step of the last run (epoch, step, loss) is a line of the uninterrupted run's log.
missing=$(grep -vxFf ref.log last.log | head -3 || true)
[ -z "$missing" ] || { echo "kill_resume: steps whose losses differ from the uninterrupted run's: $missing"; exit 1; }
# The epoch lines of the last run are the uninterrupted run's (time left out).
strip() { grep '^Epoch' "$1" | sed 's/time: [0-9.]*ms\/step - //'; }
diff <(strip ref.out | tail -n "$(strip last.out | wc -l)") <(strip last.out) > /dev/null ||
  { echo "kill_resume: epoch lines differ:"; diff <(strip ref.out) <(strip last.out); exit 1; }
echo "kill_resume: passed: $(wc -l < last.log) steps of the last run as the uninterrupted run's; exported model and checkpoint bitwise equal"
