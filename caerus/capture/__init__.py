"""Off-path capture: reads the fleet's rings in bulk and stores them (embedded chDB, or Kafka -> ClickHouse server via
the sink), plus replay of captured books.
"""
