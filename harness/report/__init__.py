"""Reports: certificates, JUnit, HTML, reproducers; always written atomically."""
