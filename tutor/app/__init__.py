"""The Textual face of infprof-tutor: `infprof-tutor` with no subcommand opens it (see app.py)."""
