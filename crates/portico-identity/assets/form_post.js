"use strict";
// response_mode=form_post: post the authorization response to the client at once.
document.getElementById("form-post").submit();
