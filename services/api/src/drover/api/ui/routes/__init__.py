"""The console's page families, a router each."""
