// An app that imports LiveListServer gets the list model and the HTML DSL too (Component, Section,
// CellNode, HTMLAdapter, UpdaterOptions, `div`, `button`…), and the HTTP types its own routes answer
// with (HTTPResponse, HTTPError, HTTPStatus, HTTPMethod), so that it imports one module.
@_exported public import LiveListHTML
@_exported public import LiveListHTTP
