import ParserFuzzing

#if canImport(Glibc)
import Glibc
#endif

// One binary for every parser: libFuzzer takes one entry point per program, and
// REACHD_FUZZ_TARGET says which parser it is (`make fuzz` sets it).
let target: FuzzTarget = {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
    guard let name = getenv("REACHD_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name) else {
        fputs("reachd-fuzz: set REACHD_FUZZ_TARGET to one of: \(names)\n", stderr)
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    target.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
