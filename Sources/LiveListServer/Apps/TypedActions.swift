public import LiveListEngine
public import LiveListHTML
import Foundation
import Synchronization

/// An app's actions as values: a `String`-backed type (an enum, usually) whose raw values are the names
/// the page sends with `POST /lists/NAME/actions` (docs/PROTOCOL.md, "Actions").
///
///     enum TodoAction: String, ListActions { case add, enter, toggle, delete }
///
/// Enter in a field of the actions form sends `enter` (the form's default button): declare it when the
/// app's fields should do something on Enter. A raw value holds neither `:` (which starts the cell) nor
/// `;` (which starts a payload).
public protocol ListActions: RawRepresentable, Sendable where RawValue == String {}

/// A browser action decoded as the app's own type: which action, about which cell, with the form's fields.
public struct TypedAction<Kind: ListActions>: Sendable {
    /// The action.
    public var kind: Kind
    /// The key of the cell it is about, if any.
    public var cell: String?
    /// The form's other fields (or the JSON body's other string members).
    public var fields: [String: String]
    /// The session that sent it.
    public var session: String?
    /// Who sent it, as the app's `authenticate` says (``LiveListApp/authenticate(_:)``); nil when the
    /// app has none.
    public var identity: Identity?

    /// The typed form of `action`; nil when its type is not one of `Kind`'s.
    public init?(_ action: ListAction) {
        guard let kind = Kind(rawValue: action.type) else { return nil }
        self.kind = kind
        cell = action.cell.flatMap { $0.isEmpty ? nil : $0 }
        fields = action.fields
        session = action.session
        identity = action.identity
    }

    /// The cell's key read as `ID` (`action.cell(as: Int.self)`); nil without a cell or when it does not parse.
    public func cell<ID: LosslessStringConvertible>(as type: ID.Type) -> ID? {
        cell.flatMap { ID($0) }
    }

    /// Where the cell the action is about is in `elements`: the index of the first element whose `id`
    /// has the cell's key (the key of its `data-cell`); nil without a cell or when none has it.
    ///
    ///     if let index = action.index(in: items) { items[index].done.toggle() }
    public func index<Elements: Collection>(in elements: Elements) -> Elements.Index? where Elements.Element: IdentifiableComponent {
        guard let cell else { return nil }
        return elements.firstIndex { AnyListID($0.id).key == cell }
    }

    /// The text typed in the field `name`, trimmed of spaces and newlines; nil when the field is
    /// missing or blank. Text longer than `maxCharacters` user-perceived characters or `maxBytes`
    /// bytes of UTF-8 is refused, never cut: the action is answered 422 (`text_too_long`, naming the
    /// field) and the list is unchanged. Both limits matter: one character can hold any number of
    /// combining marks, so a character limit alone bounds nothing in bytes. Every field comes from
    /// the browser: bound what it may add to your state.
    ///
    ///     guard let title = try action.text("title", maxCharacters: 200, maxBytes: 800) else { return }
    public func text(_ name: String, maxCharacters: Int, maxBytes: Int) throws(ActionRefusal) -> String? {
        guard let raw = fields[name] else { return nil }
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        let bytes = text.utf8.count
        guard bytes <= maxBytes else {
            throw ActionRefusal(field: name, code: "text_too_long",
                                detail: "\(name): \(bytes) bytes, more than the limit of \(max(0, maxBytes)) bytes")
        }
        // Counted only within the byte limit, and stopped one past the limit.
        let characters = text.prefix(max(0, maxCharacters) + 1).count
        guard characters <= maxCharacters else {
            throw ActionRefusal(field: name, code: "text_too_long",
                                detail: "\(name): more than the limit of \(max(0, maxCharacters)) characters")
        }
        return text
    }

    /// The action's payload (``actionButton(_:cell:payload:_:content:)``, or a JSON action's `payload`
    /// member, a string of JSON) decoded as `type`. Like every field it comes from the browser: one
    /// that is missing (`missing_payload`), larger than `maxBytes` (`payload_too_large`) or that does
    /// not decode as `type` (`invalid_payload`) refuses the action, 422, and the list is unchanged.
    ///
    ///     let priority = try action.payload(as: Priority.self)
    public func payload<Payload: Decodable>(as type: Payload.Type, maxBytes: Int = 4_096) throws(ActionRefusal) -> Payload {
        guard let json = fields["payload"] else {
            throw ActionRefusal(field: "payload", code: "missing_payload", detail: "payload: missing; this action carries a \(Payload.self)")
        }
        guard json.utf8.count <= maxBytes else {
            throw ActionRefusal(field: "payload", code: "payload_too_large",
                                detail: "payload: \(json.utf8.count) bytes, more than the limit of \(max(0, maxBytes)) bytes")
        }
        do {
            return try JSONDecoder().decode(Payload.self, from: Data(json.utf8))
        } catch {
            throw ActionRefusal(field: "payload", code: "invalid_payload", detail: "payload: not a \(Payload.self)")
        }
    }

    /// The text typed in the field `name`, trimmed, cut to at most `limit` characters; nil when
    /// missing, blank, or longer than 4 × `limit` bytes.
    @available(*, deprecated, message: "counts Characters only, and one Character can hold megabytes of combining marks; and it cuts longer text silently. Use text(_:maxCharacters:maxBytes:), which refuses text past either limit (422).")
    public func text(_ name: String, limit: Int) -> String? {
        let text = (fields[name] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, text.utf8.count <= max(0, limit) * 4 else { return nil }
        return String(text.prefix(max(0, limit)))
    }
}

extension AppHostedList {
    /// Sets what the list does with its app's actions, decoded as `Kind`. The list refuses an action
    /// whose type is not one of `Kind`'s, or that names a cell it does not show: the page's post is
    /// answered 422 (`unknown_action`, `unknown_cell`; docs/PROTOCOL.md, "Actions") and `handler`
    /// never hears it. Selections and visibility changes of the list's cells are answered 204 and are
    /// not passed to `handler` either (unless `Kind` declares their types).
    ///
    /// A handler that throws an ``ActionRefusal`` (as ``TypedAction/text(_:maxCharacters:maxBytes:)``
    /// does) refuses the action: 422 with its code and detail.
    public func onAction<Kind: ListActions>(_ kind: Kind.Type, _ handler: @escaping @Sendable (TypedAction<Kind>) async throws -> Void) {
        let declares: @Sendable (String) -> Bool = { Kind(rawValue: $0) != nil }
        onAction(accepting: declares) { action in
            if let typed = TypedAction<Kind>(action) {
                try await handler(typed)
            }
        }
    }
}

extension StateList {
    /// Sets how the app's actions, decoded as `Kind`, change the list's stored state (a list registered
    /// with ``ListRegistry/hostApp(_:configuration:state:render:)``): each runs `change` on the latest
    /// state in the list's ordered write path (``updateState(_:_:)``), so concurrent actions never
    /// overwrite each other. Actions that arrive while the list is storing a change wait together and
    /// are then applied in order and stored with one write (one version, one fsync). A change that
    /// throws leaves the state as it was before it (the others of its batch still apply); a state that
    /// cannot be stored leaves the list as it was. `onError` hears why, except for an
    /// ``ActionRefusal``, which answers the action (422).
    public func onAction<Kind: ListActions>(
        _ kind: Kind.Type, changing state: State.Type, onError: (@Sendable (any Error) -> Void)? = nil,
        _ change: @escaping @Sendable (TypedAction<Kind>, inout State) throws -> Void
    ) {
        let changes = StateChanges<State>(list: self)
        onAction(kind) { action in
            do {
                try await changes.submit { state in try change(action, &state) }
            } catch let refusal as ActionRefusal {
                throw refusal
            } catch {
                onError?(error)
            }
        }
    }
}

/// The actions' changes of one list's state, waiting to be stored: one runner at a time takes every
/// change waiting and applies them in order with one ``StateList/updateState(_:_:)`` (one version,
/// one store write), so a burst of actions costs one fsync per batch, not one per action.
private final class StateChanges<State: Codable & Equatable & Sendable>: Sendable {
    typealias Change = @Sendable (inout State) throws -> Void
    private struct Waiting {
        var changes: [(change: Change, done: CheckedContinuation<Void, any Error>)] = []
        var running = false
    }

    private unowned let list: StateList<State>
    private let waiting = Mutex(Waiting())

    init(list: StateList<State>) {
        self.list = list
    }

    /// Applies `change` with the others waiting; returns once it is stored (or throws why not).
    func submit(_ change: @escaping Change) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            let start = waiting.withLock { waiting in
                waiting.changes.append((change, done))
                defer { waiting.running = true }
                return !waiting.running
            }
            if start {
                Task { await self.run() }
            }
        }
    }

    /// Stores batches until none waits.
    private func run() async {
        while true {
            let batch = waiting.withLock { waiting in
                defer { waiting.changes = [] }
                if waiting.changes.isEmpty { waiting.running = false }
                return waiting.changes
            }
            guard !batch.isEmpty else { return }
            // Each change's own outcome, set anew whenever the list runs the batch again (after
            // another node of a shared store wrote first).
            let outcomes = Mutex([(any Error)?](repeating: nil, count: batch.count))
            let changes = batch.map(\.change)
            do {
                try await list.updateState(State.self) { state in
                    for (index, change) in changes.enumerated() {
                        var next = state
                        do {
                            try change(&next)
                            state = next
                            outcomes.withLock { $0[index] = nil }
                        } catch {
                            outcomes.withLock { $0[index] = error }
                        }
                    }
                }
                let results = outcomes.withLock { $0 }
                for (item, error) in zip(batch, results) {
                    if let error { item.done.resume(throwing: error) } else { item.done.resume() }
                }
            } catch {
                for item in batch { item.done.resume(throwing: error) }
            }
        }
    }
}

/// The id of the actions form of a page that shows no list: a control written outside any list's cells
/// (in an app's own page) belongs to it. Inside a list, buttons and fields belong to that list's form,
/// `livelist-actions-LIST` (``listFormID(_:)``), which every page that shows the list writes beside
/// it: the list's own page and an app's page that embeds it (``AppRequest/embed(_:)``). They post
/// without JavaScript (the server answers 303 back to the page); with JavaScript, `livelist.js` posts
/// the same form and the page changes through the stream.
public let actionsFormID = "livelist-actions"

/// A submit button that sends `action` about `cell` (`action=NAME:CELL`) through its list's actions
/// form, working without JavaScript:
///
///     actionButton(TodoAction.delete, cell: item.id, .aria("label", "Delete \(item.title)")) { "✕" }
public func actionButton<Kind: ListActions, Content: HTML>(
    _ action: Kind, cell: (any LosslessStringConvertible)? = nil, _ attributes: HTMLAttribute...,
    @HTMLBuilder content: () -> Content
) -> FormControl<Content> {
    let value = action.rawValue + ":" + (cell.map { String(describing: $0) } ?? "")
    return FormControl(HTMLElement(buttonTag, attributes: [.name("action"), .value(value)] + attributes, content: content()), fallbackForm: actionsFormID)
}

/// A submit button that sends `action` about `cell` with a typed `payload` (its JSON, in the button's
/// value: `NAME;PAYLOAD:CELL`), read back with ``TypedAction/payload(as:maxBytes:)``: one action with a
/// value instead of one case per value.
///
///     actionButton(DeskAction.setPriority, cell: ticket.id, payload: Priority.urgent) { "Urgent" }
///
/// A payload that cannot be encoded is left out, so the action is refused (422 `missing_payload`)
/// rather than taken without it.
public func actionButton<Kind: ListActions, Payload: Encodable, Content: HTML>(
    _ action: Kind, cell: (any LosslessStringConvertible)? = nil, payload: Payload, _ attributes: HTMLAttribute...,
    @HTMLBuilder content: () -> Content
) -> FormControl<Content> {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let coded = (try? encoder.encode(payload)).map { ";" + Base64URL.encode($0) } ?? ""
    let value = action.rawValue + coded + ":" + (cell.map { String(describing: $0) } ?? "")
    return FormControl(HTMLElement(buttonTag, attributes: [.name("action"), .value(value)] + attributes, content: content()), fallbackForm: actionsFormID)
}

/// A text field of its list's actions form, posted with every action as the field `name` (read it in
/// ``TypedAction/fields``); Enter in it sends the `enter` action.
public func actionField(_ name: String, value: String? = nil, _ attributes: HTMLAttribute...) -> FormControl<EmptyHTML> {
    var all: [HTMLAttribute] = [.name(name)]
    if let value {
        all.append(.value(value))
    }
    return FormControl(HTMLElement(inputTag, attributes: all + attributes, content: EmptyHTML()), fallbackForm: actionsFormID)
}

/// Any other control of its list's actions form (a checkbox that posts when it changes, a select):
///
///     listControl(input(.type("checkbox"), .value("toggle:\(item.id)"), .aria("label", "Done")))
public func listControl<Content: HTML>(_ element: HTMLElement<Content>) -> FormControl<Content> {
    FormControl(element, fallbackForm: actionsFormID)
}

/// A text field of the page's actions form with the button that sends what was typed: a chat's
/// composer, a todo list's new-item row. Made for a section's header or footer:
///
///     Section(id: "todo", footer: TextEntry(TodoAction.add, field: "title", label: "New item", button: "Add")) { items }
///
/// The button sends `action` (read the text with `action.text("title", maxCharacters: …, maxBytes: …)`); Enter in the field
/// sends `enter`, which your actions declare when Enter should do the same. The page's script empties
/// the field once the server took the action (`data-reset`).
public struct TextEntry: Component, Equatable {
    /// The raw value of the action that the button sends.
    public var action: String
    /// The field's name, the key of its text in ``TypedAction/fields``.
    public var field: String
    /// The field's accessible name, and its placeholder unless one is given.
    public var label: String
    /// The text shown in the empty field.
    public var placeholder: String
    /// The button's text.
    public var button: String

    /// Creates the field `field` and the button that sends `action`.
    public init<Kind: ListActions>(_ action: Kind, field: String, label: String, placeholder: String? = nil, button: String) {
        self.action = action.rawValue
        self.field = field
        self.label = label
        self.placeholder = placeholder ?? label
        self.button = button
    }

    /// `<input form="livelist-actions-LIST" name=FIELD …><button form="livelist-actions-LIST" name="action" value="ACTION:">`.
    public var body: some HTML {
        actionField(field, .placeholder(placeholder), .aria("label", label), .autocomplete("off"), .data("reset", "true"))
        FormControl(HTMLElement(buttonTag, attributes: [.name("action"), .value(action + ":")], content: HTMLText(button)), fallbackForm: actionsFormID)
    }
}

// Names that HTMLTag accepts, written out: these never fail.
private let buttonTag = HTMLTag("button")!
private let inputTag = HTMLTag("input", isVoid: true)!
