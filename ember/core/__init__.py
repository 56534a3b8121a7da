"""ember core: primitives, traces, arrays, dtypes, pytrees."""
