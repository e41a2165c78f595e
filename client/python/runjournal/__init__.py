"""runjournal: thin Python clients for the runjournal gRPC journal server."""
