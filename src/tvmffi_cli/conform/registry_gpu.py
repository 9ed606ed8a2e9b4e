"""The CUDA checks of conform as data (registry.py turns them into Check
records; their logic is conform/checks_gpu.py, their probes conform/probe_gpu.py).

Fields as registry.Check: id, title, severity, scope, stage, what, why, fix.
They run on functions with tensor parameters of libraries that look like CUDA
code (checks_gpu.looks_cuda), with device tensors when the probe child has a
CUDA device, and are skipped with the reason otherwise.
"""

from __future__ import annotations

GPU_CHECKS: list[tuple[str, str, str, str, str, str, str, str]] = [
    (
        "device-call",
        "A call with CUDA tensors behaves",
        "error",
        "function",
        "probe",
        "For functions with tensor parameters in a library that looks like CUDA code (it "
        "asks for `TVMFFIEnvGetStream`, links a CUDA library, launches kernels or carries a "
        "fatbin; not reported otherwise), where a CUDA device is present (skipped with the "
        "reason elsewhere), every tensor parameter gets a float32 tensor in "
        "device memory and the call runs with a stream tvmffi created and published through "
        "`TVMFFIEnvSetStream`; after it returns, the stream and the context are synchronized. "
        "Returning (or raising) passes; a CUDA error reported at the synchronization "
        "(CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, ...) fails.",
        "An asynchronous CUDA error surfaces at the caller's next synchronization, blamed on "
        "whatever ran then, and most of them leave the context unusable for the process.",
        "Check shapes, strides and sizes before launching; bound every index in the kernel "
        "by the tensor's size; run the kernel under `compute-sanitizer` (`--sanitizer memcheck`).",
    ),
    (
        "device-mismatch",
        "Tensors on the wrong device are refused",
        "error",
        "function",
        "probe",
        "A CUDA tensor given to a host kernel must be refused with a raised error: a crash "
        "whose fault address lies in the tensor's device memory means the host dereferenced "
        "device memory. A host tensor given to a CUDA kernel must be refused too: returning "
        "and then failing at the synchronization with a CUDA error means the kernel was "
        "launched on host memory.",
        "Frameworks hand over tensors wherever they live; a kernel that assumes the device "
        "crashes the host process or poisons the CUDA context instead of raising a "
        "catchable error.",
        "Check `device.device_type` (kDLCPU or kDLCUDA) of every tensor argument and raise "
        "(`TVM_FFI_THROW(ValueError)`) when it is not the one the kernel handles.",
    ),
    (
        "device-bounds",
        "CUDA kernels stay inside the tensors",
        "error",
        "function",
        "probe",
        "Every device tensor of the CUDA call lies between guard regions of a known byte in "
        "the same allocation; after the call is synchronized the guards are read back, and "
        "a changed guard byte is a write before the start or past the end of the tensor.",
        "A write past a device buffer lands in another tensor of the caller (allocators pack "
        "them): wrong results, far from the kernel that caused them.",
        "Guard the kernel's writes with `if (i < n)` where n is the tensor's element count, "
        "and size the grid from the shape, not from a rounded-up constant.",
    ),
    (
        "stream-use",
        "Kernels run on the stream the caller publishes",
        "error",
        "function",
        "probe",
        "The CUDA call is repeated while the published stream is held by "
        "`cuStreamWaitValue32`: a kernel launched on that stream cannot run before tvmffi "
        "releases it, so output written before the release was computed on another stream "
        "(the legacy default stream, or one of the library's own). Judged for functions "
        "whose CUDA call writes a tensor argument.",
        "The caller orders its own work on the published stream: a kernel elsewhere races "
        "with it (reads inputs not yet written, writes outputs the caller is still reading).",
        "Launch on `TVMFFIEnvGetStream(kDLCUDA, device_id)` (with the official macros: "
        "`TVMFFIEnvGetStream(x.device().device_type, x.device().device_id)`).",
    ),
    (
        "memcheck",
        "compute-sanitizer memcheck finds nothing",
        "error",
        "function",
        "probe",
        "With `--sanitizer memcheck`, the CUDA call of each function is run once more in a "
        "worker started under NVIDIA's `compute-sanitizer --tool memcheck`; any error it "
        "reports (an invalid global read or write, a misaligned access, a leak at exit is "
        "not counted) fails. Skipped without the flag, without compute-sanitizer on PATH "
        "or without a CUDA device.",
        "memcheck sees accesses the guard regions cannot: reads out of bounds, and writes "
        "that jump over the guards into other allocations.",
        "Fix the access the report names (kernel, thread, address, size).",
    ),
]
