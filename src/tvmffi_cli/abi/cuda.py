"""Facts of the CUDA driver API that tvmffi uses, defined once (values as in
the driver's cuda.h; the functions are bound in ffi/cuda.py).

The driver is `libcuda.so.1`; TVMFFI_CUDA_DRIVER names another file (the
stand-in driver the tests build, fixtures/cuda/standin_cuda.c). Every
function returns a CUresult; the names below are the driver's own
(cuGetErrorName gives the same; the table is the fallback when it fails).
"""

from __future__ import annotations

#: The driver library, and the variable that points tvmffi at another file
#: (tests: the stand-in driver). Passed to the worker (TVMFFI_* is allow-listed).
DRIVER_SONAME = "libcuda.so.1"
DRIVER_ENV = "TVMFFI_CUDA_DRIVER"

# -- CUresult ------------------------------------------------------------------------
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_DEINITIALIZED = 4
CUDA_ERROR_STUB_LIBRARY = 34
CUDA_ERROR_INSUFFICIENT_DRIVER = 35
CUDA_ERROR_DEVICE_UNAVAILABLE = 46
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_OPERATING_SYSTEM = 304
CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
CUDA_ERROR_LAUNCH_TIMEOUT = 702
CUDA_ERROR_ASSERT = 710
CUDA_ERROR_HARDWARE_STACK_ERROR = 714
CUDA_ERROR_ILLEGAL_INSTRUCTION = 715
CUDA_ERROR_MISALIGNED_ADDRESS = 716
CUDA_ERROR_INVALID_ADDRESS_SPACE = 717
CUDA_ERROR_INVALID_PC = 718
CUDA_ERROR_LAUNCH_FAILED = 719
CUDA_ERROR_NOT_PERMITTED = 800
CUDA_ERROR_NOT_SUPPORTED = 801
CUDA_ERROR_UNKNOWN = 999

#: code -> name, used when cuGetErrorName cannot answer (an old or broken driver).
ERROR_NAMES: dict[int, str] = {
    v: k for k, v in globals().items() if k.startswith("CUDA_") and isinstance(v, int)
}

#: Errors after which the context is unusable: the driver documents that the
#: process must end before CUDA works again ("sticky" errors of a kernel).
STICKY_ERRORS = frozenset(
    {
        CUDA_ERROR_ILLEGAL_ADDRESS,
        CUDA_ERROR_LAUNCH_TIMEOUT,
        CUDA_ERROR_ASSERT,
        CUDA_ERROR_HARDWARE_STACK_ERROR,
        CUDA_ERROR_ILLEGAL_INSTRUCTION,
        CUDA_ERROR_MISALIGNED_ADDRESS,
        CUDA_ERROR_INVALID_ADDRESS_SPACE,
        CUDA_ERROR_INVALID_PC,
        CUDA_ERROR_LAUNCH_FAILED,
    }
)

#: Results of cuInit that mean "no usable device here" rather than a broken driver.
NO_DEVICE_ERRORS = frozenset(
    {CUDA_ERROR_NO_DEVICE, CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_DEVICE_UNAVAILABLE}
)

# -- streams and events --------------------------------------------------------------
CU_STREAM_DEFAULT = 0
CU_STREAM_NON_BLOCKING = 1
#: Special stream handles: the legacy default stream ("stream 0", which
#: synchronizes with blocking streams) and the per-thread default stream.
CU_STREAM_LEGACY = 0x1
CU_STREAM_PER_THREAD = 0x2
CU_EVENT_DEFAULT = 0
CU_EVENT_BLOCKING_SYNC = 1
CU_EVENT_DISABLE_TIMING = 2
#: cuStreamWaitValue32 flags: wait until (int32)(*addr - value) >= 0, or == value.
CU_STREAM_WAIT_VALUE_GEQ = 0
CU_STREAM_WAIT_VALUE_EQ = 1
CU_STREAM_WRITE_VALUE_DEFAULT = 0

# -- attributes ----------------------------------------------------------------------
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 = 92
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11
CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12
CU_MEMORYTYPE_HOST = 1
CU_MEMORYTYPE_DEVICE = 2

#: Function names in the order tried: the 64-bit / per-API-version symbol
#: first (what cuda.h maps the plain name to), then the plain one.
SYMBOLS: dict[str, tuple[str, ...]] = {
    "cuMemAlloc": ("cuMemAlloc_v2",),
    "cuMemFree": ("cuMemFree_v2",),
    "cuMemGetInfo": ("cuMemGetInfo_v2",),
    "cuDeviceTotalMem": ("cuDeviceTotalMem_v2",),
    "cuMemcpyHtoD": ("cuMemcpyHtoD_v2",),
    "cuMemcpyDtoH": ("cuMemcpyDtoH_v2",),
    "cuMemcpyDtoD": ("cuMemcpyDtoD_v2",),
    "cuMemcpyHtoDAsync": ("cuMemcpyHtoDAsync_v2",),
    "cuMemcpyDtoHAsync": ("cuMemcpyDtoHAsync_v2",),
    "cuMemcpyDtoDAsync": ("cuMemcpyDtoDAsync_v2",),
    "cuMemsetD8": ("cuMemsetD8_v2",),
    "cuMemsetD32": ("cuMemsetD32_v2",),
    "cuStreamDestroy": ("cuStreamDestroy_v2", "cuStreamDestroy"),
    "cuEventDestroy": ("cuEventDestroy_v2", "cuEventDestroy"),
    "cuEventElapsedTime": ("cuEventElapsedTime_v2", "cuEventElapsedTime"),
    "cuDevicePrimaryCtxRelease": ("cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    "cuStreamWaitValue32": ("cuStreamWaitValue32_v2", "cuStreamWaitValue32"),
    "cuStreamWriteValue32": ("cuStreamWriteValue32_v2", "cuStreamWriteValue32"),
}


def error_name(code: int) -> str:
    """The driver's name of a CUresult (CUDA_ERROR_<n> for one not in the table)."""
    return ERROR_NAMES.get(code, f"CUDA_ERROR_{code}")
