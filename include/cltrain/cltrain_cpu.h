/* The built-in CPU backend's entry point: the fallback for every op and the reference every other
 * backend is tested against. It is linked into libcltrain (and the CLI) rather than loaded as a
 * plugin, and the host reaches it through this table alone, as it reaches a plugin through
 * cltrain_backend_entry. The table is static; the caller does not free it. */
#ifndef CLTRAIN_CPU_H
#define CLTRAIN_CPU_H

#include "cltrain/cltrain_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

const cltrain_backend_iface* cltrain_cpu_backend_iface(void);

#ifdef __cplusplus
}
#endif

#endif /* CLTRAIN_CPU_H */
