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

/// The same, from its parts.
func errorResponse(_ status: Int, _ code: String, _ detail: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
    errorResponse(HTTPError(HTTPStatus(status), code: code, detail: detail), headers: headers)
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
