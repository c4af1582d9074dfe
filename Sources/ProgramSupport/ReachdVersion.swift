/// The version of reachd: of the Debian package, `reachd --version`,
/// `reachctl --version` and `reachd-trust --version`. This line is the only
/// place it is written; the Makefile reads it from here for `make deb`.
public let reachdVersion = "0.8.0"
