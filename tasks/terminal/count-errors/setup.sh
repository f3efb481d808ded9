mkdir -p logs
cat > logs/app.log <<'LOG'
2024-01-01T10:00:00 INFO started
2024-01-01T10:00:01 ERROR disk full
2024-01-01T10:00:02 WARN retrying after ERROR
2024-01-01T10:00:03 ERROR disk still full
LOG
cat > logs/worker.log <<'LOG'
2024-01-01T10:00:00 INFO worker up
2024-01-01T10:00:05 ERROR job 7 crashed
2024-01-01T10:00:06 DEBUG ERRORS=0
LOG
