"""Reading Room's offline build: reading list → papers → chunks → index artifacts → static site."""

__version__ = "0.1.0"
