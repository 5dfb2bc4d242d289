// Read access to an existing Azure AI Search service's indexes, deployed into that service's resource group.
param searchServiceName string
@description('Principal (object) id of the app\'s user-assigned identity.')
param principalId string

// Search Index Data Reader: query the indexes, nothing else (no keys, no writes, no index definitions).
var searchIndexDataReader = '1407120a-92aa-4202-b7e9-c0e197c71c8f' // Search Index Data Reader

resource searchService 'Microsoft.Search/searchServices@2023-11-01' existing = {
  name: searchServiceName
}

// Search Index Data Reader on the AI Search service
resource searchIndexDataReaderAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(searchService.id, principalId, searchIndexDataReader)
  scope: searchService
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', searchIndexDataReader)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

output id string = searchService.id
