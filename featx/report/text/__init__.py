"""The terminal tables of every command: probe (classification, regression, words), erase, neurons, sweep."""
