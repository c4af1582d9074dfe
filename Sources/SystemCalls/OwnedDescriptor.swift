import SystemPackage

/// A descriptor with one owner: closed once, when the last reference to it goes. Whoever
/// watches it on an event loop holds a reference too (`EventLoop.Watch`), so it is never
/// closed — and its number never reused — while the loop still polls it.
package final class OwnedDescriptor: Sendable {
    package let fileDescriptor: FileDescriptor
    package var rawValue: Int32 { fileDescriptor.rawValue }

    /// Takes `rawValue`, which nobody else may close.
    package init(taking rawValue: Int32) {
        fileDescriptor = FileDescriptor(rawValue: rawValue)
    }

    /// Takes what a system call returned: a descriptor, or -1 with `errno` set, which becomes
    /// the error of `operation`.
    package static func taking(_ result: Int32, _ operation: @autoclosure () -> String) throws(SystemCallError) -> OwnedDescriptor {
        guard result >= 0 else { throw SystemCallError(operation()) }
        return OwnedDescriptor(taking: result)
    }

    deinit { try? fileDescriptor.close() }
}
