/* cltrain — the status every call of the C API (cltrain.h) and of the plugin ABI
 * (cltrain_backend.h) returns. */
#ifndef CLTRAIN_STATUS_H
#define CLTRAIN_STATUS_H

typedef enum cltrain_status {
  CLTRAIN_OK = 0,
  CLTRAIN_ERROR = 1,         /* a failure; the last error says what */
  CLTRAIN_UNAVAILABLE = 2,   /* cannot run here (no driver, no device): not an error of the caller */
  CLTRAIN_OUT_OF_MEMORY = 3, /* the host or the device could not allocate what was planned */
  CLTRAIN_INVALID = 4        /* the caller passed something that cannot be accepted, or called out of order */
} cltrain_status;

#endif /* CLTRAIN_STATUS_H */
