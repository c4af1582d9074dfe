// What the documentation's snippets call of "the app" around them, declared once so that
// each snippet compiles as written (scripts/check-doc-snippets.py). Nothing here is reachd's.
import Foundation

/// An app's sync engine, paused while offline.
public func resumeSync() {}
/// An app's sync engine, paused while offline.
public func pauseSync() {}
/// An app's sync engine, started over one path.
public func startSync<Path>(over path: Path) {}
/// An app's login sheet for a captive portal.
public func showLogin(_ page: String) {}

/// A UI label: main-actor state, as UIKit's, AppKit's and GTK's are.
@MainActor public final class Label {
    /// The text shown.
    public var text = ""
    public init() {}
}

/// The app's status label.
@MainActor public let statusLabel = Label()
