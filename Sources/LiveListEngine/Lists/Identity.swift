/// Who a viewer is, as the app's `authenticate` says: an id of the app's own, a name to show, and
/// roles or claims the app's access rules read. LiveList never makes one up: without an app that
/// authenticates, every viewer's identity is nil.
public struct Identity: Sendable, Hashable, CustomStringConvertible {
    /// The app's id for this user (a user name, a database key); revocation names it.
    public var id: String
    /// A name to show (an action's author); the id when the app gives none.
    public var name: String
    /// Roles of the app's own (`admin`, `support`).
    public var roles: Set<String>
    /// Claims of the app's own (`team: "blue"`).
    public var claims: [String: String]

    public init(id: String, name: String? = nil, roles: Set<String> = [], claims: [String: String] = [:]) {
        self.id = id
        self.name = name ?? id
        self.roles = roles
        self.claims = claims
    }

    /// Whether the identity has `role`.
    public func has(role: String) -> Bool {
        roles.contains(role)
    }

    public var description: String { id }
}

/// What an access rule grants an identity on a list: to view it (its page, JSON snapshot, changes and
/// streams) and to act on it (its actions route). A rule that grants nothing, or throws, denies.
public struct Access: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Its page, snapshot, changes and event streams.
    public static let view = Access(rawValue: 1)
    /// Its actions (`POST /lists/NAME/actions`); acting needs viewing too.
    public static let act = Access(rawValue: 2)
    /// Viewing and acting.
    public static let all: Access = [.view, .act]
    /// Nothing: the list is answered as one that does not exist.
    public static let none: Access = []
}
