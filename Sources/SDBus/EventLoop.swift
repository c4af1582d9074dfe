import CSystemd
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A thin owner of an sd-event loop: the daemon's one event-loop thread. Not
/// thread-safe (nor is sd-event): everything but `wake` runs on the loop thread.
package final class EventLoop {
    package let event: OpaquePointer
    private var sources: [OpaquePointer] = []
    private var handlers: [Handler] = []
    /// Watches that come and go (a helper's output pipe), by handler.
    private var watches: [ObjectIdentifier: (source: OpaquePointer, handler: Handler)] = [:]

    final class Handler {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    package init() throws(BusError) {
        var event: OpaquePointer?
        try check(sd_event_new(&event), "creating the event loop")
        self.event = event!
    }

    deinit {
        for source in sources { sd_event_source_unref(source) }
        for (source, _) in watches.values { sd_event_source_unref(source) }
        sd_event_unref(event)
    }

    private func keep(_ handler: Handler) -> UnsafeMutableRawPointer {
        handlers.append(handler)
        return Unmanaged.passUnretained(handler).toOpaque()
    }

    /// Calls `body` whenever `descriptor` is readable (or at its end), until the watch is cancelled or let go.
    package func onReadable(_ descriptor: OwnedDescriptor, _ body: @escaping () -> Void) throws(BusError) -> Watch {
        try watch(descriptor.rawValue, keeping: descriptor, events: UInt32(EPOLLIN.rawValue), body)
    }

    /// Calls `body` whenever `descriptor` can take more output (or failed), until the watch is cancelled or let go.
    package func onWritable(_ descriptor: OwnedDescriptor, _ body: @escaping () -> Void) throws(BusError) -> Watch {
        try watch(descriptor.rawValue, keeping: descriptor, events: UInt32(EPOLLOUT.rawValue), body)
    }

    /// Calls `body` whenever `descriptor`, which `owner` holds and closes (a netlink socket, a pipe
    /// of its own), is readable; the watch keeps `owner` until it is cancelled or let go.
    package func onReadable(_ descriptor: Int32, of owner: AnyObject, _ body: @escaping () -> Void) throws(BusError) -> Watch {
        try watch(descriptor, keeping: owner, events: UInt32(EPOLLIN.rawValue), body)
    }

    private func watch(
        _ descriptor: Int32, keeping owner: AnyObject, events: UInt32, _ body: @escaping () -> Void
    ) throws(BusError)
        -> Watch
    {
        let handler = Handler(body)
        var source: OpaquePointer?
        try check(
            sd_event_add_io(
                event, &source, descriptor, events,
                { _, _, _, userdata in
                    // The closure is copied out first: cancelling from inside it frees the handler, not the closure.
                    let body = Unmanaged<Handler>.fromOpaque(userdata!).takeUnretainedValue().body
                    body()
                    return 0
                }, Unmanaged.passUnretained(handler).toOpaque()), "watching descriptor \(descriptor)")
        let key = ObjectIdentifier(handler)
        watches[key] = (source!, handler)
        return Watch(loop: self, key: key, owner: owner)
    }

    /// One descriptor watched: the watch ends when it is cancelled or when its owner lets it go,
    /// and it holds what owns the descriptor until then, so sd-event never polls a closed
    /// descriptor, or another one given the same number.
    package final class Watch {
        /// Weak: a loop that went first has let every source go.
        private weak var loop: EventLoop?
        private let key: ObjectIdentifier
        private var owner: AnyObject?

        fileprivate init(loop: EventLoop, key: ObjectIdentifier, owner: AnyObject) {
            self.loop = loop
            self.key = key
            self.owner = owner
        }

        deinit { cancel() }

        /// Stops watching and frees the watch; then lets the descriptor's owner go.
        package func cancel() {
            if let (source, _) = loop?.watches.removeValue(forKey: key) {
                _ = sd_event_source_set_enabled(source, Int32(SD_EVENT_OFF))
                sd_event_source_unref(source)
            }
            owner = nil
        }
    }

    /// Calls `body` on `signal` (which must be blocked in every thread).
    package func onSignal(_ signal: Int32, _ body: @escaping () -> Void) throws(BusError) {
        var source: OpaquePointer?
        try check(
            sd_event_add_signal(
                event, &source, signal,
                { _, _, userdata in
                    Unmanaged<Handler>.fromOpaque(userdata!).takeUnretainedValue().body()
                    return 0
                }, keep(Handler(body))), "handling signal \(signal)")
        sources.append(source!)
    }

    /// A one-shot timer that can be armed again: idle means no wake-up. It fires when
    /// it is due: an accuracy of 0 would be sd-event's default of 250 ms, by which it
    /// moves a wake-up to coalesce it with others — a 0.25 ms re-check would come up
    /// to a quarter of a second late, and a 5 ms coalescing window would be 250 ms.
    package func timer(_ body: @escaping () -> Void) throws(BusError) -> Timer {
        Timer(
            source: try addSwitchedOff("creating a timer", keep(Handler(body))) { source, handler in
                sd_event_add_time(
                    event, source, CLOCK_MONOTONIC, UInt64.max, 1,
                    { _, _, userdata in
                        Unmanaged<Handler>.fromOpaque(userdata!).takeUnretainedValue().body()
                        return 0
                    }, handler)
            })
    }

    /// Adds a source with `add`, kept for the loop's life, and switches it off until armed.
    private func addSwitchedOff(
        _ operation: String, _ handler: UnsafeMutableRawPointer,
        _ add: (UnsafeMutablePointer<OpaquePointer?>, UnsafeMutableRawPointer) -> Int32
    ) throws(BusError) -> OpaquePointer {
        var source: OpaquePointer?
        try check(add(&source, handler), operation)
        sources.append(source!)
        _ = sd_event_source_set_enabled(source, Int32(SD_EVENT_OFF))
        return source!
    }

    package struct Timer {
        let source: OpaquePointer

        /// Fires once after `delay` from now, replacing any earlier arming. Now, not `sd_event_now`:
        /// that is when the loop's iteration began, and a timer armed late in a long iteration
        /// would fire early by as much — the watcher, finding nothing due yet, re-arms and looks
        /// again, one evaluation (or one re-read of the kernel) too many.
        package func arm(after delay: Duration) {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
            _ = sd_event_source_set_time(source, microseconds + delay.microseconds)
            _ = sd_event_source_set_enabled(source, Int32(SD_EVENT_ONESHOT))
        }

        package func disarm() { _ = sd_event_source_set_enabled(source, Int32(SD_EVENT_OFF)) }
    }

    /// Calls `body` after every loop iteration that dispatched something, while
    /// switched on (it starts off): the moment to look at what the iteration's
    /// handlers did, such as a connection that has written out its queue.
    /// `first`: before the other post-iteration sources.
    package func afterEachIteration(first: Bool = false, _ body: @escaping () -> Void) throws(BusError) -> Switch {
        let source = try addSwitchedOff("adding a post-iteration source", keep(Handler(body))) { source, handler in
            sd_event_add_post(
                event, source,
                { _, userdata in
                    Unmanaged<Handler>.fromOpaque(userdata!).takeUnretainedValue().body()
                    return 0
                }, handler)
        }
        if first { try check(sd_event_source_set_priority(source, Int64(SD_EVENT_PRIORITY_IMPORTANT)), "ordering a post-iteration source") }
        return Switch(source: source)
    }

    package struct Switch {
        let source: OpaquePointer

        package func turn(on: Bool) { _ = sd_event_source_set_enabled(source, Int32(on ? SD_EVENT_ON : SD_EVENT_OFF)) }
    }

    /// Sends `WATCHDOG=1` from this loop when the service manager asked for it.
    package func enableWatchdog() { _ = sd_event_set_watchdog(event, 1) }

    /// Runs until `exit(_:)`; returns the exit code.
    package func run() throws(BusError) -> Int32 {
        let result = sd_event_loop(event)
        try check(result, "running the event loop")
        return result
    }

    package func exit(_ code: Int32) { _ = sd_event_exit(event, code) }
}

extension Duration {
    /// Whole microseconds, as sd-event and sd-bus count; negative durations are 0.
    package var microseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) * 1_000_000 + UInt64(max(0, attoseconds)) / 1_000_000_000_000
    }
}
