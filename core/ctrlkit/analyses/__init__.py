"""Analyses of what a run measured, beyond its table.

- :mod:`.interference`: ``ctrlkit analyze interference``, how changing one requested attribute
  moves every metric (the CA matrix);
- :mod:`.meta_evaluation`: ``ctrlkit meta-eval``, how well each metric agrees with human scores;
- :mod:`.agreement`: ``ctrlkit agreement``, how well raters (people, judges) agree with each other.
- :mod:`.system_means`: each system's mean of each score with an interval (a meta-eval recipe's
  second table).
"""
