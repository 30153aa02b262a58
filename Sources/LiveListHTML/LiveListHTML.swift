@_exported public import LiveList
