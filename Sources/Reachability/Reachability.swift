import Foundation
@_exported import ReachabilityCore

/// NotificationCenter for the monitor: what this module adds to ReachabilityCore.
extension ReachabilityMonitor {
    /// Posted on the callback queue for every published path of every monitor:
    /// `object` is the monitor, `userInfo[pathUserInfoKey]` the `Path` (the first
    /// one of each monitor marked `initial`).
    ///
    /// Posting starts when this name is first used, which any observer must do.
    public static var pathDidChangeNotification: Notification.Name { NotificationBridge.name }

    /// The `userInfo` key of `pathDidChangeNotification`.
    public static let pathUserInfoKey = "path"
}

/// Connects the monitors' publish hook to NotificationCenter, once.
private enum NotificationBridge {
    static let name: Notification.Name = {
        let name = Notification.Name("io.reachd.Reachability.pathDidChange")
        ReachabilityMonitor.publishObserver.withLock { observer in
            observer = { monitor, path in
                NotificationCenter.default.post(
                    name: name, object: monitor,
                    userInfo: [ReachabilityMonitor.pathUserInfoKey: path])
            }
        }
        return name
    }()
}
