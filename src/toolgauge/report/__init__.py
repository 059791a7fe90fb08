"""Reports: terminal tables and exports."""
