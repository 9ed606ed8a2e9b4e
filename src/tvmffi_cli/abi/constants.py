"""Type indices and flag values of the TVM-FFI ABI (c_api.h), defined once.

Imports nothing: ctypes-free code (the inspect fast path, renderers) may use it.
"""

# --- type indices -----------------------------------------------------------
kTVMFFIAny = -1
kTVMFFINone = 0
kTVMFFIInt = 1
kTVMFFIBool = 2
kTVMFFIFloat = 3
kTVMFFIOpaquePtr = 4
kTVMFFIDataType = 5
kTVMFFIDevice = 6
kTVMFFIDLTensorPtr = 7
kTVMFFIRawStr = 8
kTVMFFIByteArrayPtr = 9
kTVMFFIObjectRValueRef = 10
kTVMFFISmallStr = 11
kTVMFFISmallBytes = 12
kTVMFFIUnchanged = 13
kTVMFFIStaticObjectBegin = 64
kTVMFFIObject = 64
kTVMFFIStr = 65
kTVMFFIBytes = 66
kTVMFFIError = 67
kTVMFFIFunction = 68
kTVMFFIShape = 69
kTVMFFITensor = 70
kTVMFFIArray = 71
kTVMFFIMap = 72
kTVMFFIModule = 73
kTVMFFIOpaquePyObject = 74
kTVMFFIList = 75
kTVMFFIDict = 76
kTVMFFIVisitInterrupt = 77
kTVMFFIBigInt = 78
kTVMFFIStaticObjectEnd = 79
kTVMFFIDynObjectBegin = 128

#: Names of the static type indices (POD and built-in objects), for messages.
STATIC_TYPE_NAMES = {
    kTVMFFIAny: "Any",
    kTVMFFINone: "None",
    kTVMFFIInt: "int",
    kTVMFFIBool: "bool",
    kTVMFFIFloat: "float",
    kTVMFFIOpaquePtr: "void*",
    kTVMFFIDataType: "DataType",
    kTVMFFIDevice: "Device",
    kTVMFFIDLTensorPtr: "DLTensor*",
    kTVMFFIRawStr: "const char*",
    kTVMFFIByteArrayPtr: "TVMFFIByteArray*",
    kTVMFFIObjectRValueRef: "ObjectRValueRef",
    kTVMFFISmallStr: "ffi.SmallStr",
    kTVMFFISmallBytes: "ffi.SmallBytes",
    kTVMFFIUnchanged: "Unchanged",
    kTVMFFIObject: "ffi.Object",
    kTVMFFIStr: "ffi.String",
    kTVMFFIBytes: "ffi.Bytes",
    kTVMFFIError: "ffi.Error",
    kTVMFFIFunction: "ffi.Function",
    kTVMFFIShape: "ffi.Shape",
    kTVMFFITensor: "ffi.Tensor",
    kTVMFFIArray: "ffi.Array",
    kTVMFFIMap: "ffi.Map",
    kTVMFFIModule: "ffi.Module",
    kTVMFFIOpaquePyObject: "ffi.OpaquePyObject",
    kTVMFFIList: "ffi.List",
    kTVMFFIDict: "ffi.Dict",
    kTVMFFIVisitInterrupt: "ffi.VisitInterrupt",
    kTVMFFIBigInt: "ffi.BigInt",
}

# Deleter flags passed to TVMFFIObject.deleter.
kTVMFFIObjectDeleterFlagBitMaskStrong = 1
kTVMFFIObjectDeleterFlagBitMaskWeak = 2
kTVMFFIObjectDeleterFlagBitMaskBoth = 3

# Field flags of TVMFFIFieldInfo.flags (bit masks).
kTVMFFIFieldFlagBitMaskWritable = 1 << 0
kTVMFFIFieldFlagBitMaskHasDefault = 1 << 1
kTVMFFIFieldFlagBitMaskIsStaticMethod = 1 << 2
kTVMFFIFieldFlagBitSetterIsFunctionObj = 1 << 11

# Backtrace update modes.
kTVMFFIBacktraceUpdateModeReplace = 0
kTVMFFIBacktraceUpdateModeAppend = 1
