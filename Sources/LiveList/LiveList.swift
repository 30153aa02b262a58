@_exported public import ListDiff
