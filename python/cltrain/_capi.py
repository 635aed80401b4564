"""ctypes declarations of cltrain.h (the C API of libcltrain.so), and where the library is."""

import ctypes
import os

from . import _paths

OK, ERROR, UNAVAILABLE, OUT_OF_MEMORY, INVALID = 0, 1, 2, 3, 4

_f = ctypes.POINTER(ctypes.c_float)
_i32 = ctypes.POINTER(ctypes.c_int32)
_u64 = ctypes.c_uint64
_sess = ctypes.c_void_p


class Settings(ctypes.Structure):
    """cltrain_settings, member for member."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("batch_size", ctypes.c_int32),
        ("optimizer", ctypes.c_int32),
        ("learning_rate", ctypes.c_float),
        ("beta1", ctypes.c_float),
        ("beta2", ctypes.c_float),
        ("epsilon", ctypes.c_float),
        ("loss", ctypes.c_int32),
        ("loss_reduction", ctypes.c_int32),
        ("num_trainable_ops", ctypes.c_int32),
        ("epochs", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("backends", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("train_config", ctypes.c_char_p),
        ("add_missing_biases", ctypes.c_int32),
        ("memory_budget", ctypes.c_uint64),
        ("storage", ctypes.c_int32),
        ("lora_rank", ctypes.c_int32),
        ("lora_alpha", ctypes.c_float),
        ("on_nonfinite", ctypes.c_int32),
        ("checkpoint_every", ctypes.c_int32),
        ("checkpoint_dir", ctypes.c_char_p),
        ("keep_checkpoints", ctypes.c_int32),
    ]


class BudgetInfo(ctypes.Structure):
    """cltrain_budget_info."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("recomputed_steps", ctypes.c_int32),
        ("budget", ctypes.c_uint64),
        ("unbudgeted_pool", ctypes.c_uint64),
        ("extra_flops", ctypes.c_uint64),
    ]


class BackendInfo(ctypes.Structure):
    """cltrain_backend_info."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("device", ctypes.c_char_p),
        ("role_peak", ctypes.c_uint64 * 7),
        ("pool_bytes", ctypes.c_uint64),
        ("lower_bound", ctypes.c_uint64),
    ]


_SIGNATURES = {
    "cltrain_version": (ctypes.c_char_p, []),
    "cltrain_session_create": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_sess), ctypes.c_char_p, ctypes.c_size_t]),
    "cltrain_session_create_from_buffer": (
        ctypes.c_int,
        [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(_sess), ctypes.c_char_p, ctypes.c_size_t],
    ),
    "cltrain_session_destroy": (None, [_sess]),
    "cltrain_last_error": (ctypes.c_char_p, [_sess]),
    "cltrain_get_settings": (ctypes.c_int, [_sess, ctypes.POINTER(Settings)]),
    "cltrain_set_settings": (ctypes.c_int, [_sess, ctypes.POINTER(Settings)]),
    "cltrain_prepare": (ctypes.c_int, [_sess]),
    "cltrain_warning": (ctypes.c_char_p, [_sess, ctypes.c_int32]),
    "cltrain_rewrite": (ctypes.c_char_p, [_sess, ctypes.c_int32]),
    "cltrain_get_shape": (
        ctypes.c_int,
        [_sess, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(_u64), ctypes.POINTER(_u64)],
    ),
    "cltrain_set_input": (ctypes.c_int, [_sess, _f, _u64]),
    "cltrain_get_input_type": (ctypes.c_int, [_sess, ctypes.POINTER(ctypes.c_int32)]),
    "cltrain_set_input_int32": (ctypes.c_int, [_sess, _i32, _u64]),
    "cltrain_predict_int32": (ctypes.c_int, [_sess, _i32, _u64, _f, _u64]),
    "cltrain_set_expected": (ctypes.c_int, [_sess, _f, _u64]),
    "cltrain_train_step": (ctypes.c_int, [_sess, _f]),
    "cltrain_train_step_outputs": (ctypes.c_int, [_sess, _f, _f, _u64]),
    "cltrain_evaluate": (ctypes.c_int, [_sess, _f, _f, _u64]),
    "cltrain_predict": (ctypes.c_int, [_sess, _f, _u64, _f, _u64]),
    "cltrain_get_position": (ctypes.c_int, [_sess, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int32)]),
    "cltrain_set_epochs_done": (ctypes.c_int, [_sess, ctypes.c_int32]),
    "cltrain_get_skipped_steps": (ctypes.c_int, [_sess, ctypes.POINTER(ctypes.c_int64)]),
    "cltrain_resume": (ctypes.c_int, [_sess, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "cltrain_get_progress": (ctypes.c_int, [_sess, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_double)]),
    "cltrain_weight_elements": (ctypes.c_int, [_sess, ctypes.c_char_p, ctypes.POINTER(_u64)]),
    "cltrain_get_weight": (ctypes.c_int, [_sess, ctypes.c_char_p, _f, _u64]),
    "cltrain_set_weight": (ctypes.c_int, [_sess, ctypes.c_char_p, _f, _u64]),
    "cltrain_num_trained_weights": (ctypes.c_int, [_sess, ctypes.POINTER(ctypes.c_int32)]),
    "cltrain_trained_weight_name": (ctypes.c_int, [_sess, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p)]),
    "cltrain_reset_optimizer": (ctypes.c_int, [_sess]),
    "cltrain_export_circle": (ctypes.c_int, [_sess, ctypes.c_char_p]),
    "cltrain_export_circleplus": (ctypes.c_int, [_sess, ctypes.c_char_p]),
    "cltrain_export_checkpoint": (ctypes.c_int, [_sess, ctypes.c_char_p]),
    "cltrain_export_files": (ctypes.c_int, [_sess, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]),
    "cltrain_import_checkpoint": (ctypes.c_int, [_sess, ctypes.c_char_p]),
    "cltrain_export_lora": (ctypes.c_int, [_sess, ctypes.c_char_p]),
    "cltrain_import_lora": (ctypes.c_int, [_sess, ctypes.c_char_p]),
    "cltrain_num_backends": (ctypes.c_int, [_sess, ctypes.POINTER(ctypes.c_int32)]),
    "cltrain_get_backend": (ctypes.c_int, [_sess, ctypes.c_int32, ctypes.POINTER(BackendInfo)]),
    "cltrain_get_budget": (ctypes.c_int, [_sess, ctypes.POINTER(BudgetInfo)]),
    "cltrain_num_operators": (ctypes.c_int, [_sess, ctypes.POINTER(ctypes.c_int32)]),
    "cltrain_operator_backend": (ctypes.c_int, [_sess, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p)]),
}


def located(variable, path):
    """$variable if set, else path (from _paths) relative to this package, or absolute."""
    env = os.environ.get(variable)
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, path))


def library_path():
    """$CLTRAIN_LIBRARY, else the libcltrain.so this package was built or installed with."""
    return located("CLTRAIN_LIBRARY", _paths.LIBRARY)


def load():
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError("cltrain: cannot load libcltrain (%s): %s; set CLTRAIN_LIBRARY to its path" % (path, e))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
