// CHECK_FINITE: flag = 1 where any element of the inputs is NaN or Inf. Definition: N_IN (inputs,
// 1 to 8); arguments ends.s0 .. s6 (END0 .. END6: the inputs' cumulative element counts) and total
// (the work size: the last input's end), so that checks of other tensors share a program.
// Work-item i looks at element i of the inputs laid end to end. The test is on the bits (exponent
// all ones), which no fast-math option folds away; the writers of the flag all write 1, through
// an atomic exchange so that no two plain stores race.

#define END0 (ends.s0)
#define END1 (ends.s1)
#define END2 (ends.s2)
#define END3 (ends.s3)
#define END4 (ends.s4)
#define END5 (ends.s5)
#define END6 (ends.s6)

__kernel void check_finite(__global float* pool, uint flag_off, uint o0, uint o1, uint o2, uint o3, uint o4, uint o5,
                           uint o6, uint o7, const uint8 ends, uint total) {
  const uint i = get_global_id(0);
  if (i >= total) return;
  uint at;
  if (i < END0) at = o0 + i;
#if N_IN > 1
  else if (i < END1)
    at = o1 + (i - END0);
#endif
#if N_IN > 2
  else if (i < END2)
    at = o2 + (i - END1);
#endif
#if N_IN > 3
  else if (i < END3)
    at = o3 + (i - END2);
#endif
#if N_IN > 4
  else if (i < END4)
    at = o4 + (i - END3);
#endif
#if N_IN > 5
  else if (i < END5)
    at = o5 + (i - END4);
#endif
#if N_IN > 6
  else if (i < END6)
    at = o6 + (i - END5);
#endif
#if N_IN > 7
  else
    at = o7 + (i - END6);
#endif
#if N_IN <= 7
  else return;
#endif
  if ((as_uint(pool[at]) & 0x7f800000u) == 0x7f800000u) atomic_xchg((__global int*)(pool + flag_off), as_int(1.0f));
}
