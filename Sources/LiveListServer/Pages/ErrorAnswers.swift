import LiveListEngine
import LiveListHTML
import LiveListHTTP

// Every error answer of the routes is built here, and every domain error gets its status here: the
// engine and the list decoder name kinds of refusal, never HTTP statuses.

/// The JSON error answer of the contract: `{"error": CODE, "detail": TEXT}` (docs/PROTOCOL.md).
func errorResponse(_ error: HTTPError, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
    var response = HTTPResponse.error(error, formatter: liveListErrorFormatter)
    for (name, value) in headers {
        response.headers.set(name, value)
    }
    return response
}

/// Every error code that the routes answer with, and its status: the one table (the codes and their
/// meaning for clients are in docs/PROTOCOL.md). A refused write's code comes from the engine, its
/// status from its kind (``ListWriteError/Kind/status``); an app's refusal of an action is 422 with the
/// app's code.
enum ErrorCode: String {
    /// No list of that name.
    case notFound = "not_found"
    /// A body that is not JSON.
    case malformedJSON = "malformed_json"
    /// `since` that is not a version or a version vector.
    case malformedSince = "malformed_since"
    /// `If-Match` that is not `*` or one quoted version.
    case malformedIfMatch = "malformed_if_match"
    /// `If-None-Match` other than `*`.
    case malformedIfNoneMatch = "malformed_if_none_match"
    /// `If-Match` and `If-None-Match` together.
    case conflictingPreconditions = "conflicting_preconditions"
    /// A range of cells (`GET /lists/NAME/cells`) whose `from`, `count` or `keys` is not what it may be.
    case malformedRange = "malformed_range"
    /// A multiplexed stream that names no list.
    case missingList = "missing_list"
    /// A change to a multiplexed stream that no stream open on this node answers to (ended, on another
    /// node, or another viewer's).
    case unknownStream = "unknown_stream"
    /// A multiplexed stream that names more lists than it may (the engine's `too_many_lists`, the limit of JSON lists, is 422 by its kind).
    case tooManyLists = "too_many_lists"
    /// A missing or wrong write token.
    case unauthorized = "unauthorized"
    /// Not signed in (or no read token) where the list's rule asks for a viewer: 401, the same for a
    /// list that does not exist.
    case signInRequired = "sign_in_required"
    /// Signed in and allowed to view the list but not to act on it.
    case actNotAllowed = "act_not_allowed"
    /// A write from outside loopback without a write token configured.
    case writesNeedToken = "writes_need_token"
    /// `/metrics` from outside loopback without a token configured.
    case metricsNeedToken = "metrics_need_token"
    /// An action whose CSRF token is missing, stale or forged.
    case csrfFailed = "csrf_failed"
    /// A body past the route's limit.
    case bodyTooLarge = "body_too_large"
    /// A body of a type the route does not read.
    case unsupportedMediaType = "unsupported_media_type"
    /// A body in a content coding the server does not decode (`Content-Encoding: gzip`).
    case unsupportedContentEncoding = "unsupported_content_encoding"
    /// An action field of the wrong JSON type.
    case invalidType = "invalid_type"
    /// An action without its `type`.
    case missingField = "missing_field"
    /// A visibility report naming more cells than one report may.
    case tooManyCells = "too_many_cells"
    /// An action type the list does not declare.
    case unknownAction = "unknown_action"
    /// An action about a cell the list does not show.
    case unknownCell = "unknown_cell"
    /// Actions past the session's or the address's pace.
    case tooManyActions = "too_many_actions"
    /// Wrong sign-in attempts past the account's pace (``SignInSettings/failurePace``).
    case tooManyAttempts = "too_many_attempts"
    /// A sign-out the store could not keep (503, with `Retry-After`).
    case signOutNotKept = "sign_out_not_kept"
    /// A list whose content cannot be read now: a live query that fails (503, the cause logged).
    case listUnavailable = "list_unavailable"
    /// An action handler that failed (logged).
    case actionFailed = "action_failed"
    /// A route of the app's own threw an error that is not an HTTP answer.
    case routeFailed = "route_failed"

    /// The status that answers this error.
    var status: HTTPStatus {
        switch self {
        case .notFound: .notFound
        case .malformedJSON: .badRequest
        case .malformedSince: .badRequest
        case .malformedIfMatch: .badRequest
        case .malformedIfNoneMatch: .badRequest
        case .conflictingPreconditions: .badRequest
        case .malformedRange: .badRequest
        case .missingList: .badRequest
        case .unknownStream: .notFound
        case .tooManyLists: .badRequest
        case .unauthorized: .unauthorized
        case .signInRequired: .unauthorized
        case .actNotAllowed: .forbidden
        case .writesNeedToken: .forbidden
        case .metricsNeedToken: .forbidden
        case .csrfFailed: .forbidden
        case .bodyTooLarge: .contentTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .unsupportedContentEncoding: .unsupportedMediaType
        case .invalidType: .unprocessableContent
        case .missingField: .unprocessableContent
        case .tooManyCells: .unprocessableContent
        case .unknownAction: .unprocessableContent
        case .unknownCell: .unprocessableContent
        case .tooManyActions: .tooManyRequests
        case .listUnavailable: .serviceUnavailable
        case .tooManyAttempts: .tooManyRequests
        case .signOutNotKept: .serviceUnavailable
        case .actionFailed: .internalServerError
        case .routeFailed: .internalServerError
        }
    }

    /// This error with `detail` (and `Retry-After`).
    func error(_ detail: String, retryAfter: Int? = nil) -> HTTPError {
        HTTPError(status, code: rawValue, detail: detail, retryAfter: retryAfter)
    }
}

/// The answer of `code` with `detail`.
func errorResponse(_ code: ErrorCode, _ detail: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
    errorResponse(code.error(detail), headers: headers)
}

/// The formatter the HTTP layer uses for its own refusals, and the routes for theirs.
let liveListErrorFormatter: HTTPErrorFormatter = defaultHTTPErrorFormatter

extension ListWriteError.Kind {
    /// The status that answers a refused write of this kind.
    var status: HTTPStatus {
        switch self {
        case .malformed: .badRequest
        case .invalid, .limitReached: .unprocessableContent
        case .conflict: .conflict
        case .preconditionFailed: .preconditionFailed
        case .notFound: .notFound
        case .storageFailed, .internal: .internalServerError
        case .unavailable: .serviceUnavailable
        case .outcomeUnknown: .gatewayTimeout
        }
    }
}

extension ListStateError {
    /// The status that answers a list body refused by the decoder: 400 when it is not JSON, 422 when
    /// it breaks the schema.
    var status: HTTPStatus {
        isMalformedJSON ? .badRequest : .unprocessableContent
    }
}

extension HTTPError {
    /// This error as an answer.
    var response: HTTPResponse { errorResponse(self) }
}
