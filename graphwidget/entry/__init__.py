"""Entry points, at the top of the package: they may use every stage, and no stage imports them.

``cli`` (``python -m graphwidget``), ``compare_command`` (its ``compare`` subcommand), ``demo`` (the main job: the
seed story on the built-in examples), ``doctor`` (what to paste into a bug report), ``magics`` (``%gradgraph``,
``%%gradgraph``), ``gradcompare`` (``%gradcompare``), ``exits`` (the exit statuses), ``record_command`` (its ``record``
subcommand)."""
