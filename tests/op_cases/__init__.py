"""Op case tables, one module per op family; each defines ``CASES`` (a list of
``op_harness.OpCase``) and optionally ``TESTED_ELSEWHERE`` (``{op name: test that covers it}``)."""
