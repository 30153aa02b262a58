import LiveListHTML

/// The source of a list that `PUT`, `PATCH` and `DELETE` drive: its state, indexed for patches (nil
/// while the list does not exist: not created yet, or deleted), the state in the PUT body's format
/// (encoded when first asked for after a patch), and the server's limit on such lists.
struct JSONSource {
    private(set) var document: JSONListDocument?
    /// The state's body: the PUT's own bytes, or the state encoded; nil until asked for after a patch.
    private var body: [UInt8]?
    /// The places of the list limit (nil: no limit).
    let quota: ListQuota?

    init(quota: ListQuota?) {
        self.quota = quota
    }

    var exists: Bool { document != nil }

    /// The body of the current state (what a snapshot returns as `state`), encoded once per change.
    mutating func currentBody() -> [UInt8]? {
        guard let document else { return nil }
        if body == nil {
            body = document.state.encoded()
        }
        return body
    }

    /// Checks a write's precondition against the list as it is, at `version`.
    func check(_ precondition: WritePrecondition, version: Int) throws(ListWriteError) {
        switch precondition {
        case .none:
            break
        case let .version(expected):
            guard exists else {
                throw ListWriteError(.preconditionFailed, code: "version_mismatch", detail: "If-Match names version \(expected), the list does not exist")
            }
            guard expected == version else {
                throw ListWriteError(.preconditionFailed, code: "version_mismatch", detail: "If-Match names version \(expected), the list is at \(version)")
            }
        case .exists:
            guard exists else {
                throw ListWriteError(.preconditionFailed, code: "precondition_failed", detail: "If-Match: * and the list does not exist")
            }
        case .absent:
            guard !exists else {
                throw ListWriteError(.preconditionFailed, code: "precondition_failed", detail: "If-None-Match: * and the list exists, at version \(version)")
            }
        }
    }

    /// The state's sections, to render (none while the list does not exist).
    var listSections: [Section] {
        document?.state.listSections ?? []
    }

    /// Whether `state` is what the list shows already (equal states render equally: every field is
    /// rendered, and escaping is injective).
    func shows(_ state: JSONListState) -> Bool {
        document?.state == state
    }

    /// The patch that takes the list to `state` when only contents differ (see
    /// ``JSONListDocument/contentPatch(to:)``).
    func contentPatch(to state: JSONListState) -> JSONListPatch? {
        document?.contentPatch(to: state)
    }

    /// Applies `patch` to the existing list, all or nothing.
    mutating func apply(_ patch: JSONListPatch, limits: JSONListLimits) throws(ListStateError) -> JSONListDocument.Applied {
        let applied = try document!.apply(patch, limits: limits)
        if applied.changed { body = nil }
        return applied
    }

    /// Takes back a patch whose write could not be stored.
    mutating func undo(_ applied: JSONListDocument.Applied) {
        document?.undo(applied)
        body = nil
    }

    /// Takes a place of the list limit for a creation (nothing to take when the list exists).
    func takePlace() throws(ListWriteError) {
        guard !exists, let quota else { return }
        guard quota.take() else {
            throw ListWriteError(.limitReached, code: "too_many_lists", detail: "the server holds its limit of \(quota.limit) JSON lists")
        }
    }

    /// Gives back the place a failed creation took.
    func giveBackPlace() {
        if !exists { quota?.giveBack() }
    }

    /// The list now shows `state`, made from `body`.
    mutating func set(_ state: JSONListState, body: [UInt8]) {
        if document == nil {
            document = JSONListDocument(state)
        } else {
            document!.replace(with: state)
        }
        self.body = body
    }

    /// The list was deleted: its place goes back to the limit.
    mutating func remove() {
        document = nil
        body = nil
        quota?.giveBack()
    }
}
