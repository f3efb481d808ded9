awk '$2 == "ERROR"' logs/*.log | wc -l > errors.txt
