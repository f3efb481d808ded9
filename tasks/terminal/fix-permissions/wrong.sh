chmod -R 777 bin secrets
