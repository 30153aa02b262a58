/// A browser event for a list: `{"type": "select", "cell": KEY}`, a visibility change (`visible`,
/// `hidden`), or a form action of the app (`type` is then the app's own word, and `fields` the form).
public struct ListAction: Sendable, Equatable {
    /// `select`, `visible`, `hidden`, or the app's own action name.
    public var type: String
    /// The cell the event is about, if any.
    public var cell: String?
    /// Every other string field of the JSON body, or the form's fields.
    public var fields: [String: String]
    /// The session that sent it.
    public var session: String?
    /// Who sent it, as the app's `authenticate` says; nil when the app has none.
    public var identity: Identity?

    public init(type: String, cell: String? = nil, fields: [String: String] = [:], session: String? = nil, identity: Identity? = nil) {
        self.type = type
        self.cell = cell
        self.fields = fields
        self.session = session
        self.identity = identity
    }
}

/// An action refused for what it carries: a field too long, a value out of range. An action handler
/// throws it (``AppHostedList/onAction(_:)``); the page's post is then answered 422 with its ``code``
/// and ``detail`` (docs/PROTOCOL.md, "Actions"), and the list is unchanged.
///
///     guard let title = try action.text("title", maxCharacters: 200, maxBytes: 800) else { return }
public struct ActionRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// The field at fault, if one is.
    public var field: String?
    /// A stable word for programs, such as `text_too_long`.
    public var code: String
    /// What is wrong, for people; it names the field.
    public var detail: String

    public init(field: String?, code: String, detail: String) {
        self.field = field
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
