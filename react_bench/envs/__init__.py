"""Environments, one folder each: ``wiki`` (HotpotQA, FEVER, SynthWiki), and the others as they
come. Each implements ``react_bench.environment.Environment`` and owns its actions, the text of
its observations, its action grammar for the text runner, and its offline stand-ins."""
