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

    public init(type: String, cell: String? = nil, fields: [String: String] = [:], session: String? = nil) {
        self.type = type
        self.cell = cell
        self.fields = fields
        self.session = session
    }
}
