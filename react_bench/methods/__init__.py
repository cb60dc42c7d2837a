"""The methods: how an example is solved, one floor above the loop and the runners.

``core`` is the shared solver: the paper's prompting modes (Standard, CoT, CoT-SC, Act, ReAct and
their combinations, ReAct-IM) as parts on the one agent loop, the vote, the outcome, the solve
settings. ``reflexion`` (Shinn et al., 2023) and ``lats`` (Zhou et al., 2024) are the methods built
on ReAct episodes, each in a module of its own."""
