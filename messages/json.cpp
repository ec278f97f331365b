// placeholder, filled by the foundation work
