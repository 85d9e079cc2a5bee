"""Memory tied to code: the files, symbols and commit a memory is about, and whether they changed.

:mod:`~mnemo.code.git` reads a repository through the ``git`` binary (a timeout on every call,
nothing when git is missing or the repository broken); :mod:`~mnemo.code.anchors` finds what a
memory is about when it is written; :mod:`~mnemo.code.check` compares those anchors with HEAD.
"""
