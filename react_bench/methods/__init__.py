"""The methods: how an example is solved, one floor above the loop and the runners.

``core`` is the shared solver and ``Method``, what a method is to everything outside this floor:
the paper's prompting modes (Standard, CoT, CoT-SC, Act, ReAct and their combinations, ReAct-IM)
are methods of parts on the one agent loop. Every other method lives in a module of its own here
(``reflexion``: Shinn et al., 2023; ``lats``: Zhou et al., 2024) and lists itself in ``METHODS``;
``registry`` finds them, and those installed from outside through the entry point group
``react_bench.methods``. ``pricing`` is the dry run's price of a method of parts."""
