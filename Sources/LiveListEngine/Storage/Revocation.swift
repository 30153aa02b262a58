/// A change of rights that every node of a shared store must apply to its open streams: an app said
/// that an identity's or a list's rights changed, that every stream must be checked again, that a
/// browser session signed out, or that a sign-in ended. A shared store keeps them (``ListStore/recordRevocation(_:)``) so that
/// every other node reads them (``ListStore/revocations(after:)``), through the database rather than
/// through notices alone, which a node may miss.
public enum Revocation: Sendable, Hashable {
    /// The streams of the identity with this id are checked again.
    case identity(String)
    /// The streams of this list are checked again.
    case list(String)
    /// The streams of one browser session end, whatever the rules say (a sign-out). The value is
    /// a digest of the session, never the session itself, so the store holds nothing that signs in.
    case session(String)
    /// Every stream is checked again.
    case everything
    /// A sign-in ended before its cookie expired (a sign-out, ``ListStore/recordEndedSignIn(_:)``):
    /// every node refuses its cookie from now on.
    case signInEnded(EndedSignIn)
}

/// What a shared store holds of the revocations after a position: those of other processes, and the
/// position to ask after next.
public struct RevocationBatch: Sendable, Equatable {
    /// Revocations that other processes recorded, in the order recorded.
    public var revocations: [Revocation]
    /// The position of the last revocation read (of any process): ask after it next time.
    public var position: Int
    /// Whether the store no longer holds every revocation after the position asked after (they were
    /// dropped as old): the caller should check every stream again.
    public var isIncomplete: Bool

    public init(revocations: [Revocation], position: Int, isIncomplete: Bool = false) {
        self.revocations = revocations
        self.position = position
        self.isIncomplete = isIncomplete
    }
}
