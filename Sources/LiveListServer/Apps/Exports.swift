// An app imports LiveListServer alone: it gets the list model and the HTML DSL (all of LiveListHTML:
// Component, Section, CellNode, HTMLAdapter, UpdaterOptions, `div`, `button`…), and, one by one, the
// types of the HTTP layer and the engine that LiveListServer's own API takes or returns. Everything
// else of those two modules (the server, its loop, the stream machinery, the registry's parts) stays
// theirs: an app that needs it imports the module itself.
@_exported public import LiveListHTML

// What an app's own routes take and answer, and what configures the server under it.
@_exported public import struct LiveListHTTP.HTTPRequest
@_exported public import struct LiveListHTTP.HTTPResponse
@_exported public import struct LiveListHTTP.HTTPError
@_exported public import struct LiveListHTTP.HTTPStatus
@_exported public import enum LiveListHTTP.HTTPMethod
@_exported public import struct LiveListHTTP.HTTPHeaders
@_exported public import enum LiveListHTTP.HTTPVersion
@_exported public import struct LiveListHTTP.HTTPHandler
@_exported public import enum LiveListHTTP.EventLoopBackend
@_exported public import struct LiveListHTTP.HTTPServerConfiguration
@_exported public import struct LiveListHTTP.HTTPParserLimits
@_exported public import struct LiveListHTTP.TLSConfiguration
@_exported public import struct LiveListHTTP.HTTPStreamEnd
@_exported public import enum LiveListHTTP.HTTPStreamCloseReason

// The lists an app hosts, who views them, and where they are kept.
@_exported public import class LiveListEngine.ListRegistry
@_exported public import protocol LiveListEngine.HostedList
@_exported public import protocol LiveListEngine.AppHostedList
@_exported public import class LiveListEngine.AppList
@_exported public import class LiveListEngine.StateList
@_exported public import class LiveListEngine.PerViewerList
@_exported public import class LiveListEngine.JSONList
@_exported public import class LiveListEngine.PartitionedList
@_exported public import protocol LiveListEngine.LiveQueryDatabase
@_exported public import struct LiveListEngine.TableChange
@_exported public import struct LiveListEngine.ListName
@_exported public import struct LiveListEngine.ListConfiguration
@_exported public import struct LiveListEngine.RegistryLimits
@_exported public import struct LiveListEngine.ListAction
@_exported public import struct LiveListEngine.ActionRefusal
@_exported public import struct LiveListEngine.Identity
@_exported public import struct LiveListEngine.Viewer
@_exported public import struct LiveListEngine.Access
@_exported public import struct LiveListEngine.ListWrite
@_exported public import struct LiveListEngine.ListWriteError
@_exported public import enum LiveListEngine.WritePrecondition
@_exported public import struct LiveListEngine.IdempotencyKey
@_exported public import protocol LiveListEngine.ListStore
@_exported public import protocol LiveListEngine.SharedListStore
@_exported public import class LiveListEngine.FileListStore
@_exported public import class LiveListEngine.MemoryListStore
@_exported public import struct LiveListEngine.StoreError
@_exported public import struct LiveListEngine.StoredLists
@_exported public import struct LiveListEngine.StoredUpdate
@_exported public import enum LiveListEngine.StoreNotice
@_exported public import struct LiveListEngine.StoreHealth
@_exported public import enum LiveListEngine.Revocation
@_exported public import struct LiveListEngine.RevocationBatch
@_exported public import struct LiveListEngine.EndedSignIn
@_exported public import struct LiveListEngine.IdempotentWrite
