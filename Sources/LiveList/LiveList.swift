@_exported public import ListDiff
@_exported public import Markup
