import CLinuxShim

#if canImport(Glibc)
import Glibc
#endif

/// Waits until one of `descriptors` is readable, or `timeout` passes (nil: no timeout).
/// Sub-millisecond timeouts are honoured (`ppoll`). Returns what `ppoll` returns.
package func waitForReadable(_ descriptors: inout [pollfd], timeout: Duration?) -> Int32 {
    let nanoseconds: Int64 = timeout.map { max(0, $0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000) } ?? -1
    return reachd_poll(&descriptors, nfds_t(descriptors.count), nanoseconds)
}
