"""The project's checks, each runnable as `python3 -m livelist_tools.checks.NAME` (Scripts/test runs them):

  limits        the house's limits: lines, traps, imports, references
  protocol      the server's JSON samples against docs/schemas
  doc_snippets  the guides' Swift blocks compiled or found in the examples
  examples      each Examples/ package run as an app author would (driven by Scripts/check-examples.sh)
"""
