import SDBus

/// The contract spoken on a connection: calls and signals by their declarations.
extension BusConnection {
    /// Calls a method of the daemon's object (always named: a peer ignores the destination);
    /// the answer and the reply's serial, which tells the daemon's older signals from newer ones.
    package func call(
        _ method: ReachabilityContract.Method, _ arguments: String..., timeout: Duration = .seconds(25)
    ) throws(BusError) -> (answer: String?, serial: UInt64) {
        try callWithSerial(
            method.name, arguments, destination: ReachabilityContract.name, path: ReachabilityContract.path,
            interface: ReachabilityContract.interface, timeout: timeout)
    }

    /// Calls a method of the daemon's object without waiting: `reply` gets the answer (or the
    /// error) when the connection is next processed. `timeout`: nil for sd-bus's 25 s.
    package func callAsync(
        _ method: ReachabilityContract.Method, _ arguments: [String], timeout: Duration? = nil,
        reply: @escaping (BusMessage) -> Void
    ) throws(BusError) {
        try callAsync(
            ReachabilityContract.name, ReachabilityContract.path, ReachabilityContract.interface, method.name,
            arguments.map { .string($0) }, timeout: timeout, reply: reply)
    }

    /// Sends one of the object's signals.
    @discardableResult
    package func emit(_ signal: ReachabilityContract.Signal, _ first: String, _ second: String? = nil) -> Int32 {
        emit(path: ReachabilityContract.path, interface: ReachabilityContract.interface, member: signal.name, first, second)
    }

    /// Calls `body` with each of the object's `signal` from `sender` (nil: from anyone, as on a
    /// peer connection, whose signals carry no sender): its one or two arguments, and its serial.
    @discardableResult
    package func onSignal(
        _ signal: ReachabilityContract.Signal, from sender: String?, _ body: @escaping (String, String?, UInt64) -> Void
    ) throws(BusError) -> SignalMatch {
        try onSignal(
            sender: sender, path: ReachabilityContract.path, interface: ReachabilityContract.interface, member: signal.name,
            twoArguments: signal.arguments == 2, body)
    }
}
