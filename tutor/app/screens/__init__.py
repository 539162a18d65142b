"""One module per screen: browser, puzzle, results, help, workspace setup, output tail."""
