"""What mnemo adds to an agent's context and whether it was used.

- ``budget``       the token estimate, the memory lines, packing a block within its budget;
- ``sessions``     each hook session's state: turn, what it was given, what came from it;
- ``audit``        after a turn: was each injected memory used (citation, then the decision model);
- ``suppression``  which memories a person no longer gets, for never using them;
- ``stats``        what memory cost a period's sessions and how much of it was used.
"""
