public import LiveListHTML

/// A write that cannot be done: what kind of refusal it is, a stable code, and a detail for people.
/// The engine knows no protocol; the layer above maps each kind onto its own (the routes answer HTTP
/// statuses, in one place).
public struct ListWriteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What kind of refusal.
    public enum Kind: Sendable, Hashable {
        /// The body is not JSON at all.
        case malformed
        /// The body is JSON but breaks the list schema or its limits.
        case invalid
        /// The write contradicts the list's state: it exists already, Swift code owns it, or its
        /// versions are exhausted.
        case conflict
        /// The caller's precondition (a version, existence or absence) does not hold.
        case preconditionFailed
        /// There is no such list.
        case notFound
        /// A server-wide limit (the number of lists) is reached.
        case limitReached
        /// The store could not keep the write; nothing changed.
        case storageFailed
        /// The store cannot be reached now (a database restarting); nothing changed. Try again shortly.
        case unavailable
        /// The store did not say whether it kept the write (a database that stalled, or a connection
        /// lost, with the write in flight): the list may or may not have changed.
        case outcomeUnknown
        /// A fault of the server itself.
        case `internal`
    }

    public var kind: Kind
    /// A stable word for programs, such as `version_mismatch`.
    public var code: String
    /// What is wrong, for people.
    public var detail: String
    /// For the operator's log only, never for an answer: what went wrong inside the server (a store
    /// error names the store's files).
    package var cause: String?
    /// Set when a shared store refused the write because another process wrote the list first (at
    /// this version): the list catches up and the write runs again.
    package var staleVersion: Int?
    /// Set when a shared store refused the write because it keeps another write with its idempotency
    /// key: the list answers what that write made.
    package var idempotencyKeyUsed = false

    public init(_ kind: Kind, code: String, detail: String) {
        self.kind = kind
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}

/// An acknowledged write: whether it created the list, the changeset it caused, and that changeset's
/// JSON (encoded once: the same bytes went to the log and to every stream).
public struct ListWrite: Sendable {
    /// Whether the write created the list.
    public var created: Bool
    /// The changeset the write caused (a creating write's is `from: 0`; an identical state's has no
    /// operations and no new version).
    public var changeset: ListChangeset
    /// The changeset's JSON.
    public var json: [UInt8]
    /// Whether the write was not made again: an earlier one with its idempotency key made it, and this
    /// is what that one made (the changeset as far as this process still has it).
    public var replayed = false

    /// The list's version after the write.
    public var version: Int { changeset.version }
}

/// What a write expects of the list's current state, checked inside the list's ordered write path, so
/// that no other write can come between the check and the write.
public enum WritePrecondition: Sendable, Equatable {
    /// Nothing: create or replace.
    case none
    /// `If-Match: "V"`: the list exists at exactly this version.
    case version(Int)
    /// `If-Match: *`: the list exists, at any version.
    case exists
    /// `If-None-Match: *`: the list does not exist (the write creates it).
    case absent
}
