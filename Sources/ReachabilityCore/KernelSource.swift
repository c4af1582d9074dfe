import Netlink

/// A kernel other than the rtnetlink sockets' for every engine a set of options
/// opens (`MonitorOptions.kernel`): a test's embedded kernel. Like
/// `networkNamespace`, it says which network is watched, so it reaches every
/// engine the options reach — a monitor's, a one-off path's, a compat manager's.
package protocol KernelSource: AnyObject, Sendable {
    /// A fresh subscription to its events, and where its questions go.
    func open() throws -> (events: any KernelEvents, queries: any KernelQueries)
}
