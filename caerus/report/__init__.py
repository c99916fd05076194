"""Reports from session folders: headline tables, nines charts, markdown/html rendering, comparisons and the index."""
