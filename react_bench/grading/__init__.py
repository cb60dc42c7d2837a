"""Reading a run's answers a second time, beside the paper's exact match: the rule tier (``rules``),
the LLM judge (``judge``) and the grader's own checks (``audit``)."""
