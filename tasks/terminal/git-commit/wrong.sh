cd project && git init -q && git -c user.name=dev -c user.email=dev@example.com commit -q --allow-empty -m 'initial import'
