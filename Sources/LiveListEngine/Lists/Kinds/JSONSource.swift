import LiveListHTML

/// The source of a list that `PUT` and `DELETE` drive: its state and the exact body that produced it
/// (nil while the list does not exist: not created yet, or deleted), and the server's limit on such lists.
struct JSONSource {
    private(set) var current: (state: JSONListState, body: [UInt8])?
    /// The places of the list limit (nil: no limit).
    let quota: ListQuota?

    init(quota: ListQuota?) {
        self.quota = quota
    }

    var exists: Bool { current != nil }

    /// The body of the current state (what a snapshot returns as `state`).
    var body: [UInt8]? { current?.body }

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

    /// Whether `state` is what the list shows already (equal states render equally: every field is
    /// rendered, and escaping is injective).
    func shows(_ state: JSONListState) -> Bool {
        current?.state == state
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
        current = (state, body)
    }

    /// The list was deleted: its place goes back to the limit.
    mutating func remove() {
        current = nil
        quota?.giveBack()
    }
}
